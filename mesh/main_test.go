package mesh

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them.
// memberlist's MockTransport (TestMemberlistMockNetworkTransport) blocks
// its senders on unbuffered channels that nothing drains after shutdown:
// those are memberlist's, not mesh's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*MockTransport).WriteToAddress"))
}
