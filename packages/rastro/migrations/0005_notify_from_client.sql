-- A NOTIFY inside the appending transaction takes a cluster-wide lock through its commit's
-- flush, serializing concurrent appends. The store now notifies after its appends commit;
-- readers poll as well, so a notification is only ever a wake-up hint.
drop trigger events_appended on events;
drop function notify_events_appended();
