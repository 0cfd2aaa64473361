package core

import (
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The options of the connect subresources read from their query, field by field as Kubernetes'
// generated url.Values conversions read them: a boolean is true unless "0" or "false", the first
// value of a parameter counts.

func queryBool(q url.Values, name string) bool {
	var b bool
	v := q[name]
	_ = runtime.Convert_Slice_string_To_bool(&v, &b, nil)
	return b
}

func queryInt64(q url.Values, name string, into **int64) error {
	v, ok := q[name]
	if !ok {
		return nil
	}
	if err := runtime.Convert_Slice_string_To_Pointer_int64(&v, into, nil); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s: %v", name, err))
	}
	return nil
}

func podLogOptions(q url.Values) (*corev1.PodLogOptions, error) {
	o := &corev1.PodLogOptions{
		Container: q.Get("container"), Follow: queryBool(q, "follow"), Previous: queryBool(q, "previous"),
		Timestamps: queryBool(q, "timestamps"), InsecureSkipTLSVerifyBackend: queryBool(q, "insecureSkipTLSVerifyBackend"),
	}
	for name, into := range map[string]**int64{"sinceSeconds": &o.SinceSeconds, "tailLines": &o.TailLines, "limitBytes": &o.LimitBytes} {
		if err := queryInt64(q, name, into); err != nil {
			return nil, err
		}
	}
	if v, ok := q["sinceTime"]; ok {
		if err := metav1.Convert_Slice_string_To_Pointer_v1_Time(&v, &o.SinceTime, nil); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("sinceTime: %v", err))
		}
	}
	if q.Has("stream") {
		s := q.Get("stream")
		o.Stream = &s
	}
	return o, nil
}

func podExecOptions(q url.Values) *corev1.PodExecOptions {
	return &corev1.PodExecOptions{
		Container: q.Get("container"), Command: q["command"],
		Stdin: queryBool(q, "stdin"), Stdout: queryBool(q, "stdout"), Stderr: queryBool(q, "stderr"), TTY: queryBool(q, "tty"),
	}
}

func podAttachOptions(q url.Values) *corev1.PodAttachOptions {
	return &corev1.PodAttachOptions{
		Container: q.Get("container"),
		Stdin:     queryBool(q, "stdin"), Stdout: queryBool(q, "stdout"), Stderr: queryBool(q, "stderr"), TTY: queryBool(q, "tty"),
	}
}

func podPortForwardOptions(q url.Values) (*corev1.PodPortForwardOptions, error) {
	o := &corev1.PodPortForwardOptions{}
	v := q["ports"]
	if err := metav1.Convert_Slice_string_To_Slice_int32(&v, &o.Ports, nil); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("ports: %v", err))
	}
	return o, nil
}
