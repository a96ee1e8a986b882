"""Evaluators (SVM on frozen embeddings) and the protocols that compose training and evaluation."""
