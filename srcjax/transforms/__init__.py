"""Source-to-source transformations of ANF programs (AD today; control flow and vmap next)."""
