"""The policy every framework binding shares, one job a module: how an op and a predivide factor become
scaling (scaling), how unnamed ops are named (naming), gradient compression (compression), how
gradients are grouped (grouping), Python objects between ranks (objects), and the names every binding
exports (exports). A binding (kolo.torch, kolo.tensorflow, kolo.keras, kolo.jax) holds only its
framework's glue: its tensors' descriptors, its casts, its ops."""
