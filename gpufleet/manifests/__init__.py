"""The check's input: files (and standard input) to Kubernetes objects that remember where they came from
(`reading`), the type checks of the fields the check reads (`documents`), and workloads with their pod
templates (`workloads`). Below admission and the scheduler: both read what this package gives them."""
