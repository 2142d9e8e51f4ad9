"""The package version, in a leaf module so that what records it (train.py, the interop export) need
not import the package itself."""
__version__ = "0.1.0"
