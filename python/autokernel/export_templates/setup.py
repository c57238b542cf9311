"""The package holds compiled kernel modules for one platform: its wheel says so (a platform tag),
so pip does not install it where the modules cannot load. Everything else is in pyproject.toml."""
from setuptools import setup
from setuptools.dist import Distribution


class PlatformDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=PlatformDistribution)
