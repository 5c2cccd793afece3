"""``latentchess serve``: a local web board to play the engines, analyse, and watch the latent view.

Modules: ``opponents`` (the engine allow-list and its parameters), ``sessions`` (one game and
search per browser tab), ``service`` (the work done in threads: views, engine moves, analyses),
``app`` (the Starlette routes), ``server`` (loading everything and running uvicorn), ``cli``.
"""
