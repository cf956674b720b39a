# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A real Kubernetes control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd) for the tests, built
once from Debian's sources (:mod:`.build`), started on 127.0.0.1 (:mod:`.cluster`) and populated with simulated nodes
(:mod:`.node_simulator`). See docs/real-control-plane.md.
"""
