package coordinator_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const zkClientPkg = "github.com/go-zookeeper/zk"

// deps lists the packages pkg links (go list -deps, without tests).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go") // go test puts its own go first in PATH
	require.NoError(t, err, "the go command is needed to list dependencies")
	out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s:\n%s", pkg, out)
	return strings.Fields(string(out))
}

// A program that imports only rmq (or only this package) must not link the
// ZooKeeper client: it comes with package coordinator/zookeeper alone.
func TestCoreDoesNotLinkZooKeeper(t *testing.T) {
	for _, pkg := range []string{"github.com/rmq-go/rmq", "github.com/rmq-go/rmq/coordinator"} {
		t.Run(pkg, func(t *testing.T) {
			d := deps(t, pkg)
			require.True(t, slices.Contains(d, pkg), "go list -deps lists the package itself: %v", d)
			assert.False(t, slices.Contains(d, zkClientPkg), "%s links %s", pkg, zkClientPkg)
			for _, p := range d {
				assert.False(t, strings.HasPrefix(p, "github.com/rmq-go/rmq/coordinator/zookeeper"),
					"%s links %s", pkg, p)
			}
		})
	}
	// The check itself sees the client where it is linked.
	assert.True(t, slices.Contains(deps(t, "github.com/rmq-go/rmq/coordinator/zookeeper"), zkClientPkg),
		"coordinator/zookeeper does not link %s", zkClientPkg)
}
