package main

import (
	"context"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/amqpdest"
	"github.com/smartdrop/webhooks/kafkadest"
	"github.com/smartdrop/webhooks/natsdest"
	"github.com/smartdrop/webhooks/webhooksd/internal/server"
)

// destinationKinds are the destinations this binary is built with, by their -destinations name.
// HTTP (http and https URLs) is the library's own and always on. A broker module joins with its row
// here, its import, and its require and replace (=> ../<module>) in go.mod.
var destinationKinds = []server.DestinationKind{
	{Name: "http", Schemes: []string{"http", "https"}},
	{Name: "amqp", Schemes: []string{"amqp", "amqps"}, Open: func(_ context.Context, env server.DestinationEnv) (webhooks.Destination, func() error, error) {
		d, err := amqpdest.New(amqpdest.Options{Logger: env.Log})
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	}},
	{Name: "nats", Schemes: []string{"nats", "tls"}, Open: func(_ context.Context, env server.DestinationEnv) (webhooks.Destination, func() error, error) {
		d, err := natsdest.New(natsdest.Options{Logger: env.Log})
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	}},
	{Name: "kafka", Schemes: []string{"kafka"}, Open: func(_ context.Context, env server.DestinationEnv) (webhooks.Destination, func() error, error) {
		d, err := kafkadest.New(kafkadest.Options{Logger: env.Log})
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	}},
}
