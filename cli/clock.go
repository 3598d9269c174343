package cli

import "github.com/harn-dev/harn/util/clock"

// clk is the client's clock: the command line reads the time and waits
// only through it (TestOneClock).
var clk clock.Clock = clock.Real{}
