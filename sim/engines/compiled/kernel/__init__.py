"""The compiled event loop: the queueing core of tiersim as numba functions over flat arrays.

It simulates the same network as the reference engine (`sim.tiers`, `sim.kernel`) and follows
it step by step: the same calendar order (time, then scheduling order), the same
processor-sharing CPU with its two exact regimes, the same FIFO slot pools, the same client
life cycle (timeouts, retries, SYN retransmission) and the same recorder (batch rows,
cumulative log-binned histogram).  Given the same random numbers it computes the same
trajectory; `sim.engines.compiled.engine` feeds it the reference's own streams, block by block.

One module per mechanism, named after its reference twin (`sim.tiers.proxy.mod_jk` ↔
`mod_jk`, `sim.kernel.cpu` ↔ `cpu`, ...); the state's tables are declared once in `tables`,
their columns in `layout`; `loop` pops the calendar and hands each event to the `on_event` of
the module whose `EVENTS` hold its kind.  The
modules call each other through the module (`calendar.push`), which numba resolves when it
compiles, so they may refer to one another.  numba caches each function beside its module,
stamped with a hash of the whole package (`cache.PackageLocator`): an edit in any module
recompiles the loop.
"""

# the package's cache locator first: numba picks a function's locator when it decorates it
from sim.engines.compiled.kernel.cache import is_warm as is_warm
from sim.engines.compiled.kernel.layout import *  # noqa: F403
from sim.engines.compiled.kernel.loop import run_events as run_events
from sim.engines.compiled.kernel.state import State as State
from sim.engines.compiled.kernel.state import new_state as new_state
from sim.engines.compiled.kernel.streams import REFILLS as REFILLS
from sim.engines.compiled.kernel.streams import SAMPLERS as SAMPLERS
from sim.engines.compiled.kernel.streams import SCRIPTS as SCRIPTS
from sim.engines.compiled.kernel.tables import TABLE as TABLE
from sim.engines.compiled.kernel.tables import TABLES as TABLES
from sim.engines.compiled.kernel.tables import Table as Table
from sim.engines.compiled.kernel.tables import empty_state_sizes as empty_state_sizes
