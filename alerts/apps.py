from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        """Subscribe to what the monitors side finds and announces (the only way
        the two meet: monitors never imports alerts), escalation to deliveries
        that fail for good, and channel health to both and to channels that
        deliver again."""
        # here, not at the top: these import models, which load after the registry
        from alerts import channels, delivery, health, incidents, retention
        from monitors import detections, signals

        detections.subscribe(incidents.on_detections, many=incidents.on_detections_many,
                             state=incidents.MONITOR_STATE)
        signals.outage_settled.connect(channels.on_outage_settled,
                                       dispatch_uid="alerts-outage")
        signals.purge_requested.connect(incidents.on_purge_requested,
                                        dispatch_uid="alerts-purge")
        signals.tick.connect(incidents.on_tick, dispatch_uid="alerts-escalate")
        signals.tick_done.connect(channels.on_tick_done, dispatch_uid="alerts-tick")
        signals.prune.connect(lambda sender, now, **kw: retention.prune(now),
                              dispatch_uid="alerts-prune", weak=False)
        delivery.delivery_failed.connect(incidents.on_delivery_failed,
                                         dispatch_uid="alerts-escalate-failed")
        # channels that say when they break (channel.failing / channel.recovered)
        signals.tick.connect(health.on_tick, dispatch_uid="alerts-channel-health")
        delivery.delivery_failed.connect(health.on_delivery_failed,
                                         dispatch_uid="alerts-channel-failing")
        delivery.channel_recovered.connect(health.on_channel_recovered,
                                           dispatch_uid="alerts-channel-recovered")
