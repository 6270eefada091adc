-- The acidflow metastore lives in its own database next to Airflow's (docker-compose.yaml).
CREATE USER acidflow WITH PASSWORD 'acidflow';
CREATE DATABASE acidflow OWNER acidflow;
