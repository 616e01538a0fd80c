"""gpucost: the pure logic behind the GPU cost attribution warehouse.

Nothing in this package imports dbt or opens a database: the dbt Python models
in ``python_models/`` fetch relations, call these functions and return the result.
"""

__version__ = "0.1.0"
