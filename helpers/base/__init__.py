"""What every layer stands on: where files live (paths), ids, the guards named, and the caps of one turn (limits)."""
