"""gridsample: the GridSample operator for NumPy, any rank, every mode and padding.

``import gridsample`` loads NumPy and Numba only; integrations with other
frameworks live in their own modules and import those frameworks there.
"""

from ._affine import affine_grid
from ._affine_warp import affine_warp
from ._api import grid_sample
from ._backward import grid_sample_backward
from ._errors import GridSampleError, GridSampleTypeError
from ._push import grid_count, grid_push
from ._second_order import grid_sample_double_backward
from ._splines import spline_coefficients

__version__ = "0.1.0"

__all__ = ["grid_sample", "grid_sample_backward", "grid_sample_double_backward", "grid_push",
           "grid_count", "affine_grid", "affine_warp", "spline_coefficients",
           "GridSampleError", "GridSampleTypeError", "__version__"]
