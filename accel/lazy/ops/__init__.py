"""The ops of accel.lazy, one module per family, each op declared once in accel.lazy._optable (its torch
names, tracing, kernels, eager fallback): elementwise (arithmetic, unary, comparisons, clamp), reductions,
views (the functionalised ``*_copy`` view ops and cat), linalg (the matmul family), nn (softmax), casts
(``_to_copy``) and inplace (the in-place forms, functionalised).  Importing this package imports none of
them: accel.lazy.functions imports every family and binds the table."""
