package sim

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/script"
)

// TestImageFsInfoAsMadeOneByOne holds the simulated node's ImageFsInfo answer, its filesystems'
// messages made together, to the answer made a message at a time from the runtime's filesystems:
// one filesystem, the images apart, and the containers on the root filesystem apart from the images.
func TestImageFsInfoAsMadeOneByOne(t *testing.T) {
	q := func(s string) *script.Quantity { v := script.Q(s); return &v }
	for _, tc := range []struct {
		name string
		node script.NodeScript
	}{
		{"one filesystem", script.NodeScript{}},
		{"images apart", script.NodeScript{ImageFs: &script.Filesystem{Capacity: q("1Gi"), Inodes: q("1000")}}},
		{"containers on rootfs", script.NodeScript{
			ImageFs:     &script.Filesystem{Capacity: q("1Gi"), Inodes: q("1000")},
			RootFs:      &script.Filesystem{Mountpoint: "/", Capacity: q("2Gi"), Used: q("1Gi"), Inodes: q("5000")},
			ContainerFs: "rootfs",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			mock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			rt, err := fakecri.New(fakecri.Options{Clock: mock, Seed: 1, Script: &script.Script{Node: tc.node}})
			if err != nil {
				t.Fatal(err)
			}
			want := &runtimeapi.ImageFsInfoResponse{}
			for _, f := range rt.Filesystems() {
				u := &runtimeapi.FilesystemUsage{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: f.Mountpoint},
					UsedBytes: &runtimeapi.UInt64Value{Value: f.UsedBytes}, InodesUsed: &runtimeapi.UInt64Value{Value: f.InodesUsed}}
				if f.HoldsImages {
					want.ImageFilesystems = append(want.ImageFilesystems, u)
				}
				if f.HoldsContainers {
					want.ContainerFilesystems = append(want.ContainerFilesystems, u)
				}
			}
			n := &simNode{rt: rt, cri: inProcess{rt: rt}}
			got, err := n.ImageFsInfo(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) || len(want.ImageFilesystems) == 0 || len(want.ContainerFilesystems) == 0 {
				t.Errorf("ImageFsInfo answered %v, want %v", got, want)
			}
		})
	}
}
