"""In-context learning of function classes: closed-form baselines and analysis."""
