"""Kafka's hierarchical timing wheel and the purgatory of delayed operations."""
from .driver import TimerDriver
from .purgatory import DelayedOperation, DelayedOperationPurgatory
from .timing_wheel import SystemTimer, TimerTask, TimerTaskList, TimingWheel

__all__ = ["SystemTimer", "TimerTask", "TimerTaskList", "TimingWheel", "DelayedOperation",
           "DelayedOperationPurgatory", "TimerDriver"]
