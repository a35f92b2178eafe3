"""Reduction operations: the values of zcoll_op_t."""
import enum

__all__ = ["Op", "SUM", "PROD", "MIN", "MAX", "AVG"]


class Op(enum.IntEnum):
    """zcoll_op_t. AVG is the sum divided by the number of ranks; for integers the
    division truncates toward zero, and integer SUM and PROD wrap modulo 2**bits."""

    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4


SUM, PROD, MIN, MAX, AVG = Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.AVG
