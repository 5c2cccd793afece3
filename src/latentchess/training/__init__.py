"""Training: the SupCon loss, positives sampling, the training loop and the advantage axis."""
