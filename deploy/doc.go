// Package deploy holds no code: it is the home of the deployment files
// (systemd units, docker-compose, Kubernetes manifests, Prometheus alert
// rules, the Grafana dashboard) and of the tests that keep them valid and in
// step with the metric names, the configuration and each other.
package deploy
