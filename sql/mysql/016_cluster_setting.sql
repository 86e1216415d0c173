-- cluster_setting: values every node of a cluster must agree on, recorded by the first node that
-- starts (store/shard.hpp). name 'shards': the number of shards the master's job space is split
-- into (scheduler.shards); a node configured with another count refuses to start while other
-- nodes are live (docs/architecture.md "Sharded mastership").

CREATE TABLE IF NOT EXISTS cluster_setting (
    name VARCHAR(64) NOT NULL PRIMARY KEY,
    value VARCHAR(255) NOT NULL,
    updated_at BIGINT NOT NULL
);
