package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Allocatable is capacity less what --kube-reserved and --system-reserved hold back, and less the
// hard memory.available threshold (Kubernetes' 100Mi when --eviction-hard is not given) unless
// --experimental-allocatable-ignore-eviction.
func TestCapacityAndAllocatable(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		args            []string
		cpu, mem        string
		allocCPU, alloc string
	}{
		{nil, "4", "8Gi", "4", "8092Mi"},
		{[]string{"--experimental-allocatable-ignore-eviction"}, "4", "8Gi", "4", "8Gi"},
		{[]string{"--eviction-hard=memory.available<1Gi"}, "4", "8Gi", "4", "7Gi"},
		{[]string{"--eviction-hard=nodefs.available<10%"}, "4", "8Gi", "4", "8Gi"},
		{[]string{"--kube-reserved=cpu=500m,memory=1Gi", "--system-reserved=memory=512Mi"}, "4", "8Gi", "3500m", "6556Mi"},
		{[]string{"--kube-reserved=memory=16Gi"}, "4", "8Gi", "4", "0"},
	} {
		o := parse(t, append([]string{"--orchconfig=/etc/orch/orchlet.conf"}, tc.args...)...)
		capacity, allocatable, err := capacityAndAllocatable(o, 4, 8*gib)
		if err != nil {
			t.Fatal(err)
		}
		got := func(l corev1.ResourceList, n corev1.ResourceName) string { q := l[n]; return q.String() }
		if got(capacity, corev1.ResourceCPU) != tc.cpu || got(capacity, corev1.ResourceMemory) != tc.mem ||
			got(allocatable, corev1.ResourceCPU) != tc.allocCPU || got(allocatable, corev1.ResourceMemory) != tc.alloc || got(capacity, corev1.ResourcePods) != "110" {
			t.Errorf("%v: capacity %v allocatable %v", tc.args, capacity, allocatable)
		}
	}
}

// Reservations the agent does not act on are refused by name, in API-server mode and outside it.
func TestReservationsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--orchconfig=/etc/orch/orchlet.conf", "--kube-reserved=pid=100"}, "--kube-reserved (kubeReserved): pid: this orchlet does not act on it yet"},
		{[]string{"--orchconfig=/etc/orch/orchlet.conf", "--system-reserved=ephemeral-storage=1Gi"}, "--system-reserved (systemReserved): ephemeral-storage"},
		{[]string{"--kube-reserved=cpu=1"}, "--kube-reserved (kubeReserved): it acts only in API-server mode"},
	} {
		err := parse(t, tc.args...).Unhonoured()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if err := parse(t, "--orchconfig=/etc/orch/orchlet.conf", "--kube-reserved=cpu=1,memory=1Gi", "--system-reserved=cpu=500m").Unhonoured(); err != nil {
		t.Errorf("cpu and memory reservations refused: %v", err)
	}
}
