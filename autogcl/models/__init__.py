"""Encoders and heads."""

from .gin import ContrastModel, GINEncoder, ProjectionHead, xavier_init

__all__ = ["GINEncoder", "ContrastModel", "ProjectionHead", "xavier_init"]
