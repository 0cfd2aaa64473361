// Package volumestats measures the disk usage of pods' local volumes every
// --volume-stats-agg-period, as the kubelet's volume stats calculator does.
package volumestats
