//go:build tools

// The flannel CNI plugin for the lab's flannel-cni-plugin image:
// containernetworking/plugins v0.9.1's plugins/meta/flannel, the code
// flannel-io/cni-plugin was split from (that module is not on the module
// proxy). It delegates to the bridge and host-local plugins the hosts have
// from their distribution.
package tools

import _ "github.com/containernetworking/plugins/plugins/meta/flannel"
