"""ANF program -> StableHLO text. Only this package and ``srcjax.runtime`` import jaxlib."""
