"""autogcl: graph contrastive learning with learnable view generators (AutoGCL, AAAI 2022)."""

__version__ = "0.1.0"
