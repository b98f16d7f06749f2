package proxy

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// eventRetry is the wait before re-subscribing to Docker's events (dockerd
// restarting, say).
const eventRetry = 2 * time.Second

// watch follows Docker's container events until ctx ends: a proxied
// container that starts without a call through us (restart policy,
// dockerd's restart, a start on Docker's own socket) is attached, a
// stopped one releases its addresses. Each (re)subscription first
// catches up with the containers as they are.
func (p *Proxy) watch(ctx context.Context) {
	for failures := 0; ctx.Err() == nil; failures++ {
		err := p.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		level := slog.LevelWarn
		if failures > 0 {
			level = slog.LevelDebug
		}
		p.log.Log(ctx, level, "Docker events stopped; retrying", "err", err, "in", eventRetry)
		select {
		case <-ctx.Done():
		case <-time.After(eventRetry):
		}
	}
}

func (p *Proxy) follow(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := client.Filters{}.Add("type", string(events.ContainerEventType)).
		Add("event", string(events.ActionStart), string(events.ActionDie), string(events.ActionDestroy))
	res := p.engine.Events(ctx, client.EventsListOptions{Filters: f})
	if err := p.catchUp(ctx); err != nil {
		return err
	}
	for {
		select {
		case m := <-res.Messages:
			p.handle(ctx, m)
		case err := <-res.Err:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// catchUp attaches running proxied containers (a no-op for those that
// have ethwe) and releases stopped ones, as after a router restart.
func (p *Proxy) catchUp(ctx context.Context) error {
	list, err := p.engine.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return err
	}
	for _, c := range list.Items {
		if c.State == "running" {
			if err := p.attach(ctx, c.ID); err != nil {
				p.log.Warn("cannot attach a running container", "container", shortID(c.ID), "err", err)
			}
			continue
		}
		p.release(ctx, c.ID, false)
	}
	return nil
}

func (p *Proxy) handle(ctx context.Context, m events.Message) {
	if m.Type != events.ContainerEventType || m.Actor.ID == "" {
		return
	}
	id := m.Actor.ID
	switch m.Action {
	case events.ActionStart:
		if err := p.attach(ctx, id); errors.Is(err, os.ErrNotExist) {
			p.log.Debug("container exited before it could be attached", "container", shortID(id), "err", err)
		} else if err != nil {
			p.log.Warn("cannot attach a started container", "container", shortID(id), "err", err)
		}
	case events.ActionDie:
		p.release(ctx, id, false)
	case events.ActionDestroy:
		p.release(ctx, id, true)
		p.forgetLock(id)
	}
}
