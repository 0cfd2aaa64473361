// Package host is the node agent's only way to look at the machine it runs on: whether swap is on,
// which cgroup version is mounted, kernel tunables, the hostname and the lock file, and the facts
// the agent reports or sizes pods by (memory, system info, huge page sizes, SELinux, where procfs
// and sysfs are). Real reads /proc, /sys and /etc; Fake answers from fields so tests and the
// simulator choose the machine.
//
// Check holds the start-up refusals SPEC.md asks for (swap, cgroup v1, kernel tunables), so every
// caller refuses for the same reasons with the same words.
package host
