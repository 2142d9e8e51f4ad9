"""workbench: train small sequence models on synthetic tasks on a CPU and see inside them."""
__version__ = "0.1.0"
