"""Encoders and heads."""

from .gin import ContrastModel, GINEncoder, ProjectionHead, xavier_init

__all__ = ["ContrastModel", "GINEncoder", "ProjectionHead", "xavier_init"]
