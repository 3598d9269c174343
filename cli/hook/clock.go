package hook

import "github.com/harn-dev/harn/util/clock"

// Clk is the client's clock: the command line reads the time and waits
// only through it (TestOneClock).
var Clk clock.Clock = clock.Real{}
