"""`lazy`: a property computed on first use and kept in the instance, like `functools.cached_property`.

Before Python 3.12, `cached_property` takes a lock on every first use, which cost a few microseconds
on each of the dozen facts the index computes for every record. Here the first use just stores the
value in the instance's `__dict__`, which later reads find first; two threads racing on a first use
each compute the same value (the reason 3.12 dropped the lock too).
"""


class lazy:  # noqa: N801 (named like the decorator it replaces)
    def __init__(self, compute):
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value
