"""Encoders and heads."""

from .gin import ContrastModel, GINClassifier, GINEncoder, ProjectionHead, xavier_init

__all__ = ["ContrastModel", "GINClassifier", "GINEncoder", "ProjectionHead", "xavier_init"]
