package script

// Methods are the CRI's methods, in the order of the proto, by the names a fault rule's method
// glob matches: the runtime numbers its methods by their index here.
var Methods = []string{
	"Version", "RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus",
	"ListPodSandbox", "StreamPodSandboxes", "CreateContainer", "StartContainer", "StopContainer",
	"RemoveContainer", "ListContainers", "StreamContainers", "ContainerStatus",
	"UpdateContainerResources", "ReopenContainerLog", "ExecSync", "Exec", "Attach", "PortForward",
	"ContainerStats", "ListContainerStats", "StreamContainerStats", "PodSandboxStats",
	"ListPodSandboxStats", "StreamPodSandboxStats", "UpdateRuntimeConfig", "Status",
	"CheckpointContainer", "CheckpointPod", "RestorePod", "GetContainerEvents",
	"ListMetricDescriptors", "ListPodSandboxMetrics", "StreamPodSandboxMetrics", "RuntimeConfig",
	"UpdatePodSandboxResources",
	"ListImages", "StreamImages", "ImageStatus", "PullImage", "RemoveImage", "ImageFsInfo",
}
