MATCH (k:Key) RETURN count(k) AS total
