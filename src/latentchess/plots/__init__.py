"""Plots: the latent space (UMAP), game trajectories through it, and Elo against depth."""
