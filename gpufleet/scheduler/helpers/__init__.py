"""What the scheduler's plugins and the DRA allocator share from outside pkg/scheduler, as upstream keeps it
in k8s.io/component-helpers/scheduling/corev1."""
