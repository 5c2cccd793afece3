"""Training objectives for the shared loop (:mod:`latentchess.training.loop`)."""
