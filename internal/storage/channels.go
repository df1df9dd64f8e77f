package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/sealed"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/teams"
)

// Channels holds the alert channels, all in one partition: there are few.
// Their URLs and secrets are sealed (internal/sealed) when a key is set,
// and leave this package only towards the sender and the page that shows
// them once.
type Channels struct {
	table  *tablestore.Table
	faults *Faults
	box    *sealed.Box // seals URL, Secret and OldSecret; nil: as given
}

const channelsPartition = "channel"

func (r *channelRow) secrets() map[string]*string {
	return map[string]*string{"URL": &r.URL, "Secret": &r.Secret, "OldSecret": &r.OldSecret}
}

// open opens the row's sealed fields.
func (c *Channels) open(r channelRow) (alerts.Channel, error) {
	if err := openSecrets(c.box, TableChannels, &r); err != nil {
		return alerts.Channel{}, fmt.Errorf("storage: channel %s: %w", r.RowKey, err)
	}
	return r.channel()
}

// rowOf is ch's row, its secrets sealed.
func (c *Channels) rowOf(ch alerts.Channel) *channelRow {
	r := channelRowOf(ch)
	sealSecrets(c.box, TableChannels, r)
	return r
}

// Reseal seals the secrets of rows kept in plain text or under an older
// key, and returns how many it sealed.
func (c *Channels) Reseal(ctx context.Context) (int, error) {
	return reseal[channelRow](ctx, c.box, c.table, tablestore.Query{Filter: tablestore.PartitionIs(channelsPartition)}, TableChannels)
}

type channelRow struct {
	tablestore.Meta // PartitionKey: "channel"; RowKey: channel id
	Name            string
	Kind            string
	Addresses       string // mail: comma-separated
	URL             string // teams, slack, webhook
	Secret          string // webhook: whsec_…
	OldSecret       string // webhook: the previous secret, still signing until OldUntil
	OldUntil        time.Time
	CreatedAt       time.Time
	Team            string // empty: shared
}

func (r channelRow) channel() (alerts.Channel, error) {
	ch := alerts.Channel{ID: r.RowKey, Name: r.Name, Kind: r.Kind, Addresses: commaList(r.Addresses), URL: r.URL, Secret: r.Secret,
		OldSecret: r.OldSecret, OldUntil: r.OldUntil, CreatedAt: r.CreatedAt, Version: string(r.ETag), Team: r.Team}
	if ch.Team != "" && !teams.ValidName(ch.Team) {
		return alerts.Channel{}, fmt.Errorf("storage: channel %s: Team %q is not a team's name", r.RowKey, r.Team)
	}
	// Rows another program wrote are checked as a form would be; loopback
	// URLs are allowed here because development instances write them.
	if err := ch.Validate(true); err != nil {
		return alerts.Channel{}, fmt.Errorf("storage: channel %s: %w", r.RowKey, err)
	}
	return ch, nil
}

func channelRowOf(ch alerts.Channel) *channelRow {
	return &channelRow{Meta: tablestore.Meta{PartitionKey: channelsPartition, RowKey: ch.ID, ETag: tablestore.ETag(ch.Version)},
		Name: ch.Name, Kind: ch.Kind, Addresses: strings.Join(ch.Addresses, ","), URL: ch.URL, Secret: ch.Secret,
		OldSecret: ch.OldSecret, OldUntil: ch.OldUntil, CreatedAt: ch.CreatedAt, Team: ch.Team}
}

// ListChannels returns every readable channel, ordered by id.
func (c *Channels) ListChannels(ctx context.Context) ([]alerts.Channel, error) {
	chs, faults, err := readRows[channelRow](ctx, c.table, tablestore.Query{Filter: tablestore.PartitionIs(channelsPartition)}, TableChannels, c.open)
	if err != nil {
		return nil, fmt.Errorf("storage: list channels: %w", err)
	}
	c.faults.Replace(TableChannels, faults)
	return chs, nil
}

// ErrNoChannel is a lookup of a channel that does not exist.
var ErrNoChannel = alerts.ErrNoChannel

// Get reads one channel.
func (c *Channels) Get(ctx context.Context, id string) (alerts.Channel, error) {
	var row channelRow
	if err := c.table.Get(ctx, channelsPartition, id, &row); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return alerts.Channel{}, fmt.Errorf("%w: %s", ErrNoChannel, id)
		}
		return alerts.Channel{}, fmt.Errorf("storage: get channel %s: %w", id, err)
	}
	return c.open(row)
}

// Create adds a channel; an existing id is tablestore.ErrExists.
func (c *Channels) Create(ctx context.Context, ch alerts.Channel) error {
	row := c.rowOf(ch)
	row.ETag = ""
	if err := c.table.Insert(ctx, row); err != nil {
		if errors.Is(err, tablestore.ErrExists) {
			err = fmt.Errorf("%w: %w", alerts.ErrChannelExists, err)
		}
		return fmt.Errorf("storage: create channel %s: %w", ch.ID, err)
	}
	return nil
}

// Update replaces a channel on condition that it is still at ch.Version.
func (c *Channels) Update(ctx context.Context, ch alerts.Channel) error {
	if err := c.table.Update(ctx, c.rowOf(ch)); err != nil {
		return fmt.Errorf("storage: update channel %s: %w", ch.ID, conflictAsCircuit(err))
	}
	return nil
}

// Delete removes a channel.
func (c *Channels) Delete(ctx context.Context, id string) error {
	if err := c.table.Delete(ctx, channelsPartition, id, tablestore.AnyETag); err != nil && !errors.Is(err, tablestore.ErrNotFound) {
		return fmt.Errorf("storage: delete channel %s: %w", id, err)
	}
	return nil
}
