from .stats import mean, median, mode, variance

__all__ = ['mean', 'median', 'mode', 'variance']
