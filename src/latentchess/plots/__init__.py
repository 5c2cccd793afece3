"""Plots: the latent space (UMAP), game trajectories through it, Elo against depth, and human move
matching by rating band."""
