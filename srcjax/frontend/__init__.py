"""Read a function's source and normalize it to A-normal form (libcst passes)."""
