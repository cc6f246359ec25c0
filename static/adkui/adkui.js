/* adkui: small behaviours htmx does not cover. */
