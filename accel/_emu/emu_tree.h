/*
 * An intrusive AVL tree keyed by an unsigned integer, for the emulator's ordered tables (the allocation
 * table by base address, a pool's free blocks by capacity).  Keys are unique within one tree; every
 * operation is O(log n) and allocates nothing: the node lives inside the object it orders.  The callers
 * hold G.  Recursion depth is bounded by the tree height (at most ~1.44 log2 n).
 */
#ifndef ACCEL_EMU_TREE_H
#define ACCEL_EMU_TREE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tnode {
    struct tnode *l, *r;
    uintptr_t key;
    int h;
} tnode_t;

#define TREE_ENTRY(node, type, member) ((type *)(void *)((char *)(node) - offsetof(type, member)))

static inline int tree_h(const tnode_t *n) { return n ? n->h : 0; }

static inline void tree_fix(tnode_t *n)
{
    int a = tree_h(n->l), b = tree_h(n->r);
    n->h = (a > b ? a : b) + 1;
}

static inline tnode_t *tree_rot_right(tnode_t *n)
{
    tnode_t *l = n->l;
    n->l = l->r;
    l->r = n;
    tree_fix(n);
    tree_fix(l);
    return l;
}

static inline tnode_t *tree_rot_left(tnode_t *n)
{
    tnode_t *r = n->r;
    n->r = r->l;
    r->l = n;
    tree_fix(n);
    tree_fix(r);
    return r;
}

static inline tnode_t *tree_balance(tnode_t *n)
{
    tree_fix(n);
    int bf = tree_h(n->l) - tree_h(n->r);
    if (bf > 1) {
        if (tree_h(n->l->l) < tree_h(n->l->r)) n->l = tree_rot_left(n->l);
        return tree_rot_right(n);
    }
    if (bf < -1) {
        if (tree_h(n->r->r) < tree_h(n->r->l)) n->r = tree_rot_right(n->r);
        return tree_rot_left(n);
    }
    return n;
}

/* Inserts x (its key set, not in the tree); returns the new root. */
static inline tnode_t *tree_insert(tnode_t *root, tnode_t *x)
{
    if (!root) {
        x->l = x->r = NULL;
        x->h = 1;
        return x;
    }
    if (x->key < root->key) root->l = tree_insert(root->l, x);
    else root->r = tree_insert(root->r, x);
    return tree_balance(root);
}

static inline tnode_t *tree_unlink_min(tnode_t *n, tnode_t **min)
{
    if (!n->l) {
        *min = n;
        return n->r;
    }
    n->l = tree_unlink_min(n->l, min);
    return tree_balance(n);
}

/* Removes the node with this key (if any); returns the new root. */
static inline tnode_t *tree_remove(tnode_t *root, uintptr_t key)
{
    if (!root) return NULL;
    if (key < root->key) root->l = tree_remove(root->l, key);
    else if (key > root->key) root->r = tree_remove(root->r, key);
    else {
        tnode_t *l = root->l, *r = root->r, *m;
        if (!r) return l;
        r = tree_unlink_min(r, &m);
        m->l = l;
        m->r = r;
        return tree_balance(m);
    }
    return tree_balance(root);
}

/* The node with the greatest key <= key, or NULL. */
static inline tnode_t *tree_floor(tnode_t *n, uintptr_t key)
{
    tnode_t *res = NULL;
    while (n) {
        if (n->key <= key) { res = n; n = n->r; }
        else n = n->l;
    }
    return res;
}

/* The node with the smallest key >= key, or NULL. */
static inline tnode_t *tree_ceil(tnode_t *n, uintptr_t key)
{
    tnode_t *res = NULL;
    while (n) {
        if (n->key >= key) { res = n; n = n->l; }
        else n = n->r;
    }
    return res;
}

static inline tnode_t *tree_find(tnode_t *n, uintptr_t key)
{
    while (n && n->key != key) n = key < n->key ? n->l : n->r;
    return n;
}

#endif
