"""One guard against a hang, for every subprocess and kernel cell a test waits on.

It is not a speed goal (those live in ``make bench``): a correct build on a slow or busy machine
must never reach it, so it sits far above the longest step (the README's figures, about four
minutes on two busy cores), and far enough below CI's 90 minutes that a hang fails with a message
naming the command instead of eating the whole run.
"""

HANG_GUARD_S = 1_800
