package kube

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Node condition weave sets once its router answers, as 2.8.1.
const (
	NetworkUpReason  = "WeaveIsUp"
	NetworkUpMessage = "Weave pod has set this"
)

// SetNetworkAvailable sets condition NetworkUnavailable=False (reason
// WeaveIsUp) on Node name, with a strategic merge patch of its status:
// conditions merge by type, so the kubelet's own conditions are left alone.
func SetNetworkAvailable(ctx context.Context, c kubernetes.Interface, name string) error {
	now := metav1.Now()
	cond := corev1.NodeCondition{
		Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse,
		Reason: NetworkUpReason, Message: NetworkUpMessage,
		LastTransitionTime: now, LastHeartbeatTime: now,
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if err != nil {
		return fmt.Errorf("encode Node status patch: %w", err)
	}
	_, err = c.CoreV1().Nodes().PatchStatus(ctx, name, patch)
	if err != nil {
		return fmt.Errorf("set condition NetworkUnavailable=False on Node %s: %w", name, err)
	}
	return nil
}
