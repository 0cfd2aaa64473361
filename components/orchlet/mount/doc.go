// Package mount makes the mounts the pod workers ask of the node: a tmpfs for each emptyDir of
// medium Memory, and subPaths bind-mounted through a descriptor opened without following symlinks.
// Only a process that may mount (Permitted) is given them.
package mount

import "os"

// Permitted reports whether this process may mount: it runs as root. Without, Memory emptyDir
// volumes are refused at admission rather than failing at setup, and the runtime is given each
// subPath as the path below its volume.
func Permitted() bool { return os.Geteuid() == 0 }
