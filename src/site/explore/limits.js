// Every limit the explorer applies, written once; the page shows them from here.

// Datasets the dataset list holds at once: the best matches of the words typed above it (the
// first by slug before any), so the page never lists a whole catalog.
export const DATASET_CHOICES = 20;
// Records per page.
export const PER_PAGE = 20;
// Grouped statistics ask for this many groups at most (agg `limit`, contract §12.2), and the
// chart draws every one of them: an answer never grows with the dataset.
export const TOP_GROUPS = 50;
// Keyword fields with value counts beside the table.
export const MAX_FACETS = 4;
// Values a facet lists, and how many it lists once its "more" is opened.
export const FACET_VALUES = 8;
export const FACET_MORE = 50;
// Columns the table starts with.
export const MAX_COLUMNS = 8;
// Fields (or buckets, or bins) the statistics may be grouped by at once.
export const MAX_GROUP_BY = 3;
// The percentiles the statistics offer.
export const PERCENTILES = [50, 25, 75, 90, 95, 99];
// Decimals a number is ever shown with.
export const MAX_DECIMALS = 6;
// The token is renewed once this share of its lifetime has passed.
export const RENEW_AT = 0.8;
// Points the map draws at most: one page of the API's records within its bounds.
export const MAP_POINTS = 100;
