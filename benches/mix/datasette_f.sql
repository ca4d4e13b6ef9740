with v as (
  select carrier, dep_delay as x,
    row_number() over (partition by carrier order by dep_delay) - 1 as i,
    count(*) over (partition by carrier) - 1 as m
  from flights
  where carrier is not null and dep_delay is not null
),
s as (
  select carrier, sum(x) as sum, avg(x) as avg, min(x) as min, max(x) as max,
    max(case when i = cast(0.25 * m as integer) then x end) as lo25,
    max(case when i = cast(0.25 * m as integer) + (0.25 * m > cast(0.25 * m as integer)) then x end) as hi25,
    max(0.25 * m - cast(0.25 * m as integer)) as f25,
    max(case when i = cast(0.5 * m as integer) then x end) as lo50,
    max(case when i = cast(0.5 * m as integer) + (0.5 * m > cast(0.5 * m as integer)) then x end) as hi50,
    max(0.5 * m - cast(0.5 * m as integer)) as f50,
    max(case when i = cast(0.75 * m as integer) then x end) as lo75,
    max(case when i = cast(0.75 * m as integer) + (0.75 * m > cast(0.75 * m as integer)) then x end) as hi75,
    max(0.75 * m - cast(0.75 * m as integer)) as f75
  from v group by carrier
),
c as (
  select carrier, count(*) as count from flights where carrier is not null group by carrier
)
select c.carrier, c.count, coalesce(s.sum, 0) as sum, s.avg, s.min, s.max,
  s.lo25 + (s.hi25 - s.lo25) * s.f25 as p25,
  s.lo50 + (s.hi50 - s.lo50) * s.f50 as p50,
  s.lo75 + (s.hi75 - s.lo75) * s.f75 as p75
from c left join s on s.carrier = c.carrier
order by c.count desc, c.carrier
