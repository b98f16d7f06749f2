package controller

import (
	"log/slog"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seedf75a49c6/weave/npc/nft"
)

// metrics are the controller's Prometheus collectors.
type metrics struct {
	blocked  *prometheus.CounterVec
	errors   prometheus.Counter
	rules    prometheus.Gauge
	elements prometheus.Gauge
	syncSecs prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weavenpc_blocked_connections_total",
			Help: "New connections dropped by NetworkPolicy, by protocol and destination port."}, []string{"protocol", "dport"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "weavenpc_policy_enforcement_errors",
			Help: "Failed attempts to load the policy table."}),
		rules: prometheus.NewGauge(prometheus.GaugeOpts{Name: "weavenpc_rules",
			Help: "Rules in the loaded nftables table."}),
		elements: prometheus.NewGauge(prometheus.GaugeOpts{Name: "weavenpc_set_elements",
			Help: "Elements in the sets of the loaded nftables table."}),
		syncSecs: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "weavenpc_sync_duration_seconds",
			Help: "Time to translate and load the policies after a change.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
	}
	if reg != nil {
		reg.MustRegister(m.blocked, m.errors, m.rules, m.elements, m.syncSecs)
	}
	return m
}

// blockedKey names one drop counter.
type blockedKey struct {
	proto string
	port  uint16
}

// counters turns the kernel's per-table drop counters, which restart when
// the table is swapped, into monotonic Prometheus counters.
type counters struct {
	last map[blockedKey]uint64
	m    *metrics
	log  *slog.Logger
}

// observe adds what grew since the last reading and logs it.
func (c *counters) observe(list []nft.Blocked) {
	for _, b := range list {
		k := blockedKey{b.Proto.String(), b.Port}
		delta := b.Packets
		if prev, ok := c.last[k]; ok && b.Packets >= prev {
			delta = b.Packets - prev
		}
		c.last[k] = b.Packets
		if delta == 0 {
			continue
		}
		c.m.blocked.WithLabelValues(k.proto, strconv.Itoa(int(k.port))).Add(float64(delta))
		c.log.Warn("blocked new connections (no NetworkPolicy allows them)", "protocol", k.proto, "dport", k.port, "count", delta)
	}
}

// reset forgets the readings: the table was just replaced.
func (c *counters) reset() { c.last = map[blockedKey]uint64{} }
