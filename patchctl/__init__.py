"""patchctl: keep a narrow, provable patch stack against a pinned upstream commit."""

__version__ = "0.1.0"
